// Package storeview is the read side every config store shares: one
// collection and namespace index per kind, with Get, List, Collection and
// RegisterEventHandler on top. Stores embed a *View and keep their own write
// side.
package storeview
