// Package jsonenc appends values as JSON, byte for byte as encoding/json's
// Marshal writes them (HTML characters escaped, map keys sorted, numbers
// in its shortest form), without reflection: for the hot paths where a
// search's hits are written, thousands at a time. Anything it does not
// know is handed to encoding/json. Members reads back the few members of
// such an object a caller needs (a ranker's fields of a hit) in one scan,
// without decoding the rest.
package jsonenc
