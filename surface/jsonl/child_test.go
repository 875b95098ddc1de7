package jsonl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
)

// Child-process roles. The test binary re-executes itself with childEnv set
// to one of them; the parent passes the paths in the environment.
const (
	roleLockTry  = "lock-try"  // try to open the session, print "ok" or the error
	roleLockHold = "lock-hold" // open the session, print "held", hold it until stdin closes
	roleCrash    = "crash"     // append source events in random batches until killed
)

const (
	envPath = "WEIR_JSONL_PATH"
	envSrc  = "WEIR_JSONL_SRC"
	envSeed = "WEIR_JSONL_SEED"
)

func runChild(role string) int {
	path := os.Getenv(envPath)
	switch role {
	case roleLockTry:
		s, _, err := Open(path, NoSync())
		if err != nil {
			fmt.Println(err)
			return 0
		}
		s.Close()
		fmt.Println("ok")
		return 0
	case roleLockHold:
		s, _, err := Open(path, NoSync())
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		s.Close()
		return 0
	case roleCrash:
		if err := crashChild(path); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

// crashChild continues the session at path with the events of the source
// file, in batches of 1 to 8 events, printing "try first last" before and
// "ack last" after each acknowledged (synced) batch.
func crashChild(path string) error {
	f, err := os.Open(os.Getenv(envSrc))
	if err != nil {
		return err
	}
	_, src, _, err := ReadEvents(f)
	f.Close()
	if err != nil {
		return err
	}
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	r := rand.New(rand.NewPCG(seed, 1))
	s, _, err := Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = Create(path, testHeader())
	}
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for next := int(s.NextSeq()); next < len(src); {
		batch := src[next:min(next+1+r.IntN(8), len(src))]
		first, last := batch[0].Seq, batch[len(batch)-1].Seq
		fmt.Fprintf(os.Stdout, "try %d %d\n", first, last)
		if err := s.Append(batch); err != nil {
			return err
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", last)
		next += len(batch)
	}
	fmt.Println("done")
	return s.Close()
}
