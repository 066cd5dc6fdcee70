// Package config holds the configuration model shared by every layer: Config
// (Meta, Spec, Status, Extra), its identity (Key), copying and equality, the
// revision rule for the istio.io/rev label, and JSON decoding of specs that
// reports dropped unknown fields instead of hiding them.
//
// A Config handed out by a store is immutable; whoever wants to change one
// calls DeepCopy first.
package config
