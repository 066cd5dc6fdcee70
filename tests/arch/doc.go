// Package arch holds tests of the repository's structure: the import
// direction between layers and the dependencies the project refuses.
package arch
