package store

// Unavailable lets this package's tests check how an error is classified,
// for the SQLSTATEs a shared test server cannot be made to send.
func Unavailable(err error) error { return unavailable(err) }
