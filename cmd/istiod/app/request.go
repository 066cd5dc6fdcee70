package app

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultDebugPort is the monitoring port (--monitoringAddr :15014),
// where pilot-discovery's request command sends its requests.
const defaultDebugPort = 15014

// newRequestCommand is pilot-discovery's `request <method> <path>
// [<body>]`: one HTTP request to the debug and monitoring port of the
// istiod on this host (127.0.0.1 only), the response body on standard
// output followed by a newline. A status above 399 other than 404 is an
// error naming the status and the body. --debug-port is ours (Istio's
// pilot-discovery always uses 15014; pilot-agent's request has the flag):
// for an istiod whose --monitoringAddr is elsewhere.
func newRequestCommand() *cobra.Command {
	port := defaultDebugPort
	cmd := &cobra.Command{
		Use:   "request <method> <path> [<body>]",
		Short: "Makes an HTTP request to Pilot metrics/debug endpoint",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if port < 1 || port > 65535 {
				return fmt.Errorf("--debug-port %d: not a port", port)
			}
			body := ""
			if len(args) > 2 {
				body = args[2]
			}
			c := &http.Client{Timeout: 60 * time.Second}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			if err := request(c, addr, args[0], args[1], body, cmd.OutOrStdout()); err != nil {
				return runError{err}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&port, "debug-port", port, "Port of the local istiod's debug and monitoring server (--monitoringAddr)")
	return cmd
}

// request sends method path (a leading slash optional) with body to addr
// and writes the response body and a newline to out.
func request(c *http.Client, addr, method, path, body string, out io.Writer) error {
	url := "http://" + addr + "/" + strings.TrimPrefix(path, "/")
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode > 399 && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("received unsuccessful status code %v: %v", resp.StatusCode, string(b))
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}
