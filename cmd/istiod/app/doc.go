// Package app holds the istiod command line: discovery, validate, version.
package app
