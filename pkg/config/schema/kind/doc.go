// Package kind enumerates every kind of metadata.yaml as a compact enum, the
// form used in push requests (model.ConfigKey).
package kind
