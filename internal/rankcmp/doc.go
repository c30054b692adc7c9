// Package rankcmp compares two rankings of one search: overlap@k and
// Spearman's rank correlation, defined once for the broker's shadows
// (a candidate plugin version run beside the live one) and for `quarry
// plugin test` (a candidate replayed on recorded queries), so the two
// cannot disagree on the same pair.
package rankcmp
