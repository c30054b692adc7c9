package api

// Version is Quarry's release: every role's micro service version, the
// CLI's (quarry version) and the one a benchmark report records.
const Version = "0.1.0"
