// Package gvk holds the GroupVersionKind of every kind and its version
// aliases, and converts between GVKs and the kind enum.
package gvk
