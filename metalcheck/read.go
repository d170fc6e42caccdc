package metalcheck

// readBuffer returns buf emptied, with room for a file of size bytes plus the one more
// that the read seeing end-of-file needs; a buffer too small is replaced by one with a
// quarter's slack, so that the next file of a worker usually fits.
func readBuffer(buf []byte, size int) []byte {
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+size/4+512)
	}
	return buf[:0]
}

// room returns buf with at least one byte of spare capacity to read into: a file may
// have grown since its size was taken.
func room(buf []byte) []byte {
	if len(buf) == cap(buf) {
		buf = append(buf, 0)[:len(buf)]
	}
	return buf
}
