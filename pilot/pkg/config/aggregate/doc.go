// Package aggregate joins several config stores into one: reads see, per
// kind, the union of the stores' objects (an earlier store wins a key several
// hold), and writes go to one designated writer.
package aggregate
