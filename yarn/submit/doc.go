// Package submit is the client side of an xres application: it stages the
// am and container-launcher binaries, the Flink configuration and the
// user's files into an HDFS staging folder (/user/<user>/.xres/<appId>/),
// turns them into YARN local resources with their exact sizes and
// modification times, builds the ApplicationMaster's launch context, and
// removes the staging folder when submission fails or the application ends.
//
// HDFS is reached through the small FS interface; NewHDFS adapts a
// github.com/colinmarc/hdfs/v2 client to it.
package submit
