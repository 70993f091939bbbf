package scheduler

// WaitsPerWrite is waitsPerWrite for the external tests.
const WaitsPerWrite = waitsPerWrite
