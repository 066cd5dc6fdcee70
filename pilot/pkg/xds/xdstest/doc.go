// Package xdstest holds test helpers for the xDS packages: an ADS server on
// a loopback port and the calls tests make on the project's own ADS client
// (which checks the wire rules on every message). Tests only.
package xdstest
