// Package validation holds the rules for every Pilot kind: Validate<Kind>
// functions that return all the warnings and errors of one object at once,
// each naming its field path (e.g. spec.http[0].route). The kind registry
// binds each kind to its function by name at generation time; kinds without
// rules use EmptyValidate.
package validation
