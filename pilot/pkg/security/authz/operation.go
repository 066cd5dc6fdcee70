package authz

import (
	"fmt"
	"strconv"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	authzpb "istio.io/api/security/v1beta1"
)

// Operations (to[].operation) and destination.port. All become RBAC
// permissions.

var (
	// hosts: the :authority header, case-insensitive.
	operationHost = &attribute{httpOnly: true, permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		return &rbacpb.Permission{Rule: &rbacpb.Permission_Header{Header: headerMatch(":authority", v, true)}}, nil
	}}

	// methods: the :method header.
	operationMethod = &attribute{httpOnly: true, permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		return &rbacpb.Permission{Rule: &rbacpb.Permission_Header{Header: headerMatch(":method", v, false)}}, nil
	}}

	// paths: the path without query (url_path), or a path template.
	operationPath = &attribute{httpOnly: true, permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		if isPathTemplate(v) {
			return pathTemplatePermission(v), nil
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_UrlPath{UrlPath: &matcherpb.PathMatcher{
			Rule: &matcherpb.PathMatcher_Path{Path: stringMatch(v)},
		}}}, nil
	}}

	// ports, destination.port: the local port the connection came to.
	destinationPort = &attribute{permissionValue: func(_ valueCtx, v string) (*rbacpb.Permission, error) {
		p, err := strconv.ParseUint(v, 10, 32)
		if err != nil || p > 65535 {
			return nil, fmt.Errorf("invalid port %q", v)
		}
		return &rbacpb.Permission{Rule: &rbacpb.Permission_DestinationPort{DestinationPort: uint32(p)}}, nil
	}}
)

// operationConditions are the conditions of one to[].operation, in the
// order Istio 1.31 emits them: hosts, methods, paths, ports.
func operationConditions(i int, o *authzpb.Operation) []condition {
	if o == nil {
		return nil
	}
	f := func(name string) string { return fmt.Sprintf("to[%d].operation.%s", i, name) }
	var out []condition
	add := func(a *attribute, key, name, notName string, values, notValues []string) {
		if len(values) == 0 && len(notValues) == 0 {
			return
		}
		out = append(out, condition{attr: a, key: key, values: values, notValues: notValues, field: f(name), notField: f(notName)})
	}
	add(operationHost, ":authority", "hosts", "notHosts", o.GetHosts(), o.GetNotHosts())
	add(operationMethod, ":method", "methods", "notMethods", o.GetMethods(), o.GetNotMethods())
	add(operationPath, "path-matcher", "paths", "notPaths", o.GetPaths(), o.GetNotPaths())
	add(destinationPort, keyDestinationPort, "ports", "notPorts", o.GetPorts(), o.GetNotPorts())
	return out
}
