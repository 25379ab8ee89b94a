// A Go program in keep (tests/integration/image_go.sh), beside the same
// binary run natively (and, with "fetch", through keepd's egress by
// name): Go's runtime preempts a goroutine that makes no
// call with a signal to its thread alone (tgkill), its garbage collector
// stops every goroutine so, os/exec waits with waitid(WNOWAIT), and its
// network poller is epoll. Each line's text is the same both ways.
package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var sink []byte

func say(name string, err error) {
	if err != nil {
		fmt.Println(name+":", "error", err)
		return
	}
	fmt.Println(name + ": ok")
}

// One P and a goroutine that never calls: only a preemption signal to
// its thread lets the sleeping main goroutine run again.
func preemption() {
	var stop int32
	old := runtime.GOMAXPROCS(1)
	go func() {
		for atomic.LoadInt32(&stop) == 0 {
		}
	}()
	time.Sleep(20 * time.Millisecond)
	atomic.StoreInt32(&stop, 1)
	runtime.GOMAXPROCS(old)
	fmt.Println("a goroutine that never calls was preempted")
}

// Collections while goroutines spin without a call.
func collector() {
	var wg sync.WaitGroup
	var ms0, ms1 runtime.MemStats
	stop := make(chan struct{})
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				x := 0
				for j := 0; j < 20000000; j++ {
					x += j
				}
				_ = x
			}
		}()
	}
	runtime.ReadMemStats(&ms0)
	for i := 0; i < 2000; i++ {
		sink = make([]byte, 64<<10)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	close(stop)
	wg.Wait()
	fmt.Println("collected beside spinning goroutines:", ms1.NumGC > ms0.NumGC)
}

func pool() {
	in, out := make(chan int), make(chan [32]byte)
	for w := 0; w < 4; w++ {
		go func() {
			for v := range in {
				out <- sha256.Sum256([]byte(fmt.Sprint(v)))
			}
		}()
	}
	go func() {
		for i := 0; i < 5000; i++ {
			in <- i
		}
		close(in)
	}()
	seen := map[[32]byte]bool{}
	for i := 0; i < 5000; i++ {
		seen[<-out] = true
	}
	fmt.Println("a worker pool's distinct sums:", len(seen))
}

func children() {
	out, err := exec.Command("sh", "-c", "echo child $((6*7))").Output()
	fmt.Printf("exec: %q %v\n", out, err)
	err = exec.Command("sh", "-c", "exit 3").Run()
	if ee, ok := err.(*exec.ExitError); ok {
		fmt.Println("exit status:", ee.ExitCode())
	} else {
		fmt.Println("exit status: error", err)
	}
	c1 := exec.Command("seq", "1", "1000")
	c2 := exec.Command("wc", "-l")
	r, w := io.Pipe()
	c1.Stdout, c2.Stdin = w, r
	done := make(chan string)
	go func() {
		o, e := c2.Output()
		done <- strings.TrimSpace(string(o)) + fmt.Sprint(" ", e)
	}()
	say("a pipeline's writer", c1.Run())
	w.Close()
	fmt.Println("a pipeline's reader:", <-done)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	fmt.Println("a child past its context:", exec.CommandContext(ctx, "sleep", "10").Run())
}

func loopback() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		say("listen", err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "pong "+r.URL.Path)
	})}
	go srv.Serve(ln)
	resp, err := http.Get("http://" + ln.Addr().String() + "/x")
	if err != nil {
		say("http", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println("http on loopback:", resp.StatusCode, string(b))
	}
	say("http shutdown", srv.Shutdown(context.Background()))
}

func files() {
	d, err := os.MkdirTemp(".", "go")
	if err != nil {
		say("mkdirtemp", err)
		return
	}
	p := filepath.Join(d, "f")
	say("write", os.WriteFile(p, []byte("abc"), 0o600))
	b, err := os.ReadFile(p)
	fmt.Printf("read: %q %v\n", b, err)
	say("remove", os.RemoveAll(d))
}

func signals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case s := <-ch:
		fmt.Println("signal.Notify:", s)
	case <-time.After(5 * time.Second):
		fmt.Println("signal.Notify: none in 5 s")
	}
}

// fetch URL NAME: Go's own resolver (static) or glibc's (cgo) for the
// URL's host, then its body; NAME, a name no rule allows, must not
// resolve.
func fetch(url, refused string) {
	host := strings.Split(strings.Split(url, "//")[1], ":")[0]
	addrs, err := net.LookupHost(host)
	fmt.Println("resolved:", err == nil && len(addrs) > 0)
	resp, err := http.Get(url)
	if err != nil {
		fmt.Println("get: error", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("get: %d %q\n", resp.StatusCode, b)
	}
	_, err = net.LookupHost(refused)
	fmt.Println("a name no rule allows resolves:", err == nil)
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "fetch" {
		fetch(os.Args[2], os.Args[3])
		return
	}
	fmt.Println(runtime.GOOS, runtime.GOARCH)
	preemption()
	collector()
	pool()
	children()
	loopback()
	files()
	signals()
}
