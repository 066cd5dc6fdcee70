package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

var (
	// Version is the release version; "dev" for untagged builds.
	Version = "dev"
	// IstioCompat is the Istio release this build is a drop-in for.
	IstioCompat = "1.31"
)

// Info describes the running binary.
type Info struct {
	Version     string `json:"version"`
	IstioCompat string `json:"istioCompatibility"`
	GitRevision string `json:"revision"`
	GoVersion   string `json:"golang_version"`
	BuildStatus string `json:"status"`
}

// Get returns the build information.
func Get() Info {
	info := Info{Version: Version, IstioCompat: IstioCompat, GoVersion: runtime.Version(), GitRevision: "unknown", BuildStatus: "Clean"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitRevision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					info.BuildStatus = "Modified"
				}
			}
		}
	}
	return info
}

// String renders the information on one line.
func (i Info) String() string {
	return fmt.Sprintf("version.BuildInfo{Version:%q, IstioCompatibility:%q, GitRevision:%q, GolangVersion:%q, BuildStatus:%q}",
		i.Version, i.IstioCompat, i.GitRevision, i.GoVersion, i.BuildStatus)
}
