package verify

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/testenv"
)

// chromium returns the browser the HTML test renders with: $MPSPATCH_CHROMIUM, else
// /usr/bin/chromium, else chromium or chromium-browser in PATH (testenv decides, as it does
// for make test's preflight). CI installs Debian's chromium; a machine without one fails
// the test with what to install, never skips it.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real browser: make test runs it, -short (make check) does not")
	}
	c, err := testenv.Chromium()
	if err != nil {
		t.Fatalf("no chromium to render report.html: %v; install Debian's chromium package "+
			"(apt-get install chromium; `make preflight` names everything the tests need) or set "+
			"MPSPATCH_CHROMIUM to a Chromium binary", err)
	}
	return c
}

// renderHTML opens path in headless Chromium and returns the screenshot. No network: the
// flags turn off every background fetch, and the page itself references nothing.
func renderHTML(t *testing.T, path string, width, height int) image.Image {
	t.Helper()
	tmp := t.TempDir()
	shot := filepath.Join(tmp, "shot.png")
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = run.Run(context.Background(), run.Cmd{
		Argv: []string{chromium(t), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update",
			"--disable-sync", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(tmp, "profile"),
			"--screenshot=" + shot, "--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height),
			"file://" + abs},
		Stdout: &out, Stderr: &out, Timeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, out.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot does not decode as PNG: %v", err)
	}
	return img
}

// near reports whether c is within tol of want in every channel.
func near(c color.Color, want color.RGBA, tol int) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) int {
		v := int(x>>8) - int(y)
		if v < 0 {
			return -v
		}
		return v
	}
	return d(r, want.R) <= tol && d(g, want.G) <= tol && d(b, want.B) <= tol
}

// colourBox counts the pixels near want and returns their bounding box.
func colourBox(img image.Image, want color.RGBA) (int, image.Rectangle) {
	n := 0
	box := image.Rectangle{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			if near(img.At(x, y), want, 24) {
				n++
				p := image.Rect(x, y, x+1, y+1)
				if box.Empty() {
					box = p
				} else {
					box = box.Union(p)
				}
			}
		}
	}
	return n, box
}

func TestHTMLRendersInChromium(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, HTMLFile)
	var buf bytes.Buffer
	if err := writeHTML(&buf, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Count(html, "<svg") != 2 {
		t.Errorf("want two inline <svg> charts, have %d", strings.Count(html, "<svg"))
	}
	assertSelfContained(t, html)

	img := renderHTML(t, path, 1200, 1600)
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 1600 {
		t.Errorf("screenshot is %v, want 1200x1600", b)
	}
	// Each model's curve is drawn in its series colour, which nothing else on the page uses.
	for i, model := range []string{"mlp-small", "transformer"} {
		n, box := colourBox(img, seriesColors[i])
		t.Logf("%s: %d pixels of its colour in %v", model, n, box)
		if n < 200 {
			t.Errorf("%s: only %d pixels of its series colour: the chart did not render", model, n)
			continue
		}
		// Two charts side by side, so the curves span more than one chart's width.
		if box.Dx() < 500 || box.Dy() < 40 {
			t.Errorf("%s: curve pixels span only %v", model, box)
		}
	}
	if os.Getenv("MPSPATCH_KEEP_SHOT") != "" {
		f, _ := os.Create(os.Getenv("MPSPATCH_KEEP_SHOT"))
		png.Encode(f, img)
		f.Close()
	}
}
