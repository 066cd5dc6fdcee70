// Package xds will hold the ADS server; for now it holds the debug handlers
// that show what the control plane believes (/debug/configz, /debug/mesh,
// /debug/krtz, /debug/warningz, ...).
package xds
