package luart

import (
	"fmt"
	"io"
	"os"
)

// MaxSourceBytes bounds a file the runtime reads whole: a script, a module it requires, a
// schema file. Scripts are kilobytes; a path naming /dev/zero or a large file by mistake must
// fail at once, not fill the memory (agent/config reads the files it names the same way;
// luart cannot import the agent).
const MaxSourceBytes = 16 << 20

// readSource reads a regular file of at most MaxSourceBytes. A FIFO or a device is refused
// before it is opened, so that none can block or stream.
func readSource(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := sourceFile(path, st); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil { // replaced since the check?
		return nil, err
	}
	if err := sourceFile(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err == nil && len(data) > MaxSourceBytes {
		err = fmt.Errorf("%s: larger than %d bytes", path, MaxSourceBytes)
	}
	return data, err
}

func sourceFile(path string, st os.FileInfo) error {
	switch m := st.Mode(); {
	case m.IsDir():
		return fmt.Errorf("%s: it is a directory", path)
	case m&os.ModeNamedPipe != 0:
		return fmt.Errorf("%s: not a regular file (a FIFO)", path)
	case m&os.ModeDevice != 0:
		return fmt.Errorf("%s: not a regular file (a device)", path)
	case !m.IsRegular():
		return fmt.Errorf("%s: not a regular file (%v)", path, m.Type())
	case st.Size() > MaxSourceBytes:
		return fmt.Errorf("%s: %d bytes, larger than %d", path, st.Size(), MaxSourceBytes)
	}
	return nil
}
