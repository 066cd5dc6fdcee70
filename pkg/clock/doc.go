// Package clock owns the time source of the process. Logic whose behaviour
// depends on time (debounce, rate limits, certificate rotation) takes a Clock
// at construction so that tests can drive time by hand with Fake and never
// sleep.
package clock
