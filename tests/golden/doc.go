// Package golden holds what golden and reference tests share: comparing
// decoded JSON path by path, and checking output against testdata golden
// files (rewritten with -update, orphans failing). Tests only; it imports
// nothing of the project.
package golden
