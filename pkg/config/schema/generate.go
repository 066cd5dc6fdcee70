package schema

//go:generate go run ./codegen -metadata metadata.yaml -root ../../..
