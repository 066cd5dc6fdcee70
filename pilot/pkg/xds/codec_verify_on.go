//go:build xdsverify

package xds

// verifyTag is set by the xdsverify build tag (make test sets it).
const verifyTag = true
