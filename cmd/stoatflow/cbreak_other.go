//go:build !linux

package main

import (
	"errors"
	"os"
)

// cbreak is Linux's only: elsewhere top's q takes an Enter after it, as the terminal
// delivers whole lines.
func cbreak(*os.File) (func(), error) {
	return nil, errors.New("cbreak mode is implemented for Linux terminals only")
}
