// Package gvr holds the GroupVersionResource of every kind and its version
// aliases.
package gvr
