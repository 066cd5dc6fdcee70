// Package docs checks the reference pages under docs/ against the code, so
// that a flag, environment variable, metric, HTTP endpoint, package or make
// target added or removed without its line in the docs fails CI: each table
// whose first column names things (in backticks) must list exactly what the
// code defines. The tests also check that relative links and repository paths
// written in README.md and docs/ exist.
package docs
