// Package resource describes one kind of configuration: its identity (GVK,
// GVR, aliases), scope, Go types for Spec and Status, and its validator.
// Schemas are built from pkg/config/schema/metadata.yaml by generated code.
package resource
