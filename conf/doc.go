// Package conf reads xres configuration: Flink's configuration file (the
// flat flink-conf.yaml or the nested config.yaml of Flink 1.19+) with -D
// overrides, typed options declared once in a registry, and Hadoop's
// *-site.xml files.
//
// # Which file
//
// Find picks the Flink configuration file: the --conf flag if given (a file,
// or a directory holding one of the two files below), else
// $FLINK_CONF_DIR/config.yaml, else $FLINK_CONF_DIR/flink-conf.yaml. When no
// flag is given and neither file exists the configuration is empty, which
// is not an error; a file asked for by flag that does not exist is.
//
// # Which format
//
// As in Flink 1.19+, the file's base name decides: a file named
// config.yaml is standard YAML (block mappings and sequences, flow
// sequences and mappings, quoted scalars), flattened to dotted keys, so
//
//	external-resource:
//	  gpu:
//	    amount: 2
//
// sets external-resource.gpu.amount to "2"; a list becomes Flink's
// ;-separated list value ([gpu, fpga] → "gpu;fpga"). Any other name
// (flink-conf.yaml) is read with Flink's legacy line loader: each line is cut
// at the first '#', split at the first ": ", and trimmed; a line that does
// not split into a non-empty key and value is skipped with a warning
// (Config.Warnings), exactly as Flink skips it.
//
// Scalars keep their text: there is no YAML 1.1 conversion, so 0x10ee,
// 010 and yes stay as written, and ~, null and an empty value mean no value
// (the key is skipped with a warning). If both files are in one directory,
// config.yaml wins, as in Flink 1.19+.
//
// The YAML reader is our own and covers what Flink configurations use. It
// rejects, with a "file:line: ..." error, what it does not cover: anchors,
// aliases, tags, block scalars (| and >), multi-line scalars, several
// documents, directives, complex keys, tabs in indentation and duplicate
// keys (also keys that collide once flattened).
//
// # Precedence
//
// -D key=value overrides (Load's dynamic argument) win over the file;
// Config.Set wins over both. A dynamic file (ReadDynamicFile, a JSON object
// of strings; what am submit stages so that -D values stay off command
// lines) holds -D overrides too: WithDynamicFile puts its entries before
// the command line's -D, which win. Every value remembers its origin
// ("/etc/flink/flink-conf.yaml:12", "-D", "set"), and every error about a
// value names its key and origin.
package conf
