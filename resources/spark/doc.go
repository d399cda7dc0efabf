// Package spark writes what a Spark executor is told about its resources
// (Spark 3.5's resources file: name and addresses per resource), from the
// devices a driver granted.
package spark
