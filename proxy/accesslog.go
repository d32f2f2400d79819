package proxy

import (
	"context"
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// AccessLog writes one line per request: time, method, cleaned path (never
// the query, which may carry tokens), status, bytes, duration, user id,
// request id and client IP, in the text or JSON form of the server's log.
//
// It is on the request path of every proxied request, so it is cheap: each
// line is appended by hand into a pooled buffer (no slog record, no JSON
// encoder, no reflection), and lines are collected in memory and written in
// batches by Run, whole lines only, so a line never interleaves with
// another writer's line on the same stream.
type AccessLog struct {
	json bool
	now  func() time.Time

	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error // the last write error, reported once by Run
}

// accessFlushSize is the batch size that makes a request write the batch
// itself instead of waiting for Run.
const accessFlushSize = 64 << 10

// accessFlushInterval is how often Run writes the collected lines.
const accessFlushInterval = 200 * time.Millisecond

// NewAccessLog returns an AccessLog writing to w, in JSON when json is
// true, else in slog's text form.
func NewAccessLog(w io.Writer, json bool) *AccessLog {
	return &AccessLog{w: w, json: json, now: time.Now, buf: make([]byte, 0, accessFlushSize)}
}

// Run writes the collected lines every accessFlushInterval until ctx ends,
// then once more; it returns the last write error, if any.
func (a *AccessLog) Run(ctx context.Context) error {
	t := time.NewTicker(accessFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush()
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.err
		case <-t.C:
			a.Flush()
		}
	}
}

// Flush writes the collected lines now.
func (a *AccessLog) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.flushLocked()
}

func (a *AccessLog) flushLocked() {
	if len(a.buf) == 0 {
		return
	}
	if _, err := a.w.Write(a.buf); err != nil {
		a.err = err
	}
	a.buf = a.buf[:0]
}

// accessEntry is one request as the access log tells it.
type accessEntry struct {
	start             time.Time
	method, path      string
	status            int
	bytes             int64
	duration          time.Duration
	userID, requestID string
	clientIP          netip.Addr
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// write formats e and adds it to the batch.
func (a *AccessLog) write(e *accessEntry) {
	bp := linePool.Get().(*[]byte)
	line := a.format((*bp)[:0], e)
	a.mu.Lock()
	if len(a.buf)+len(line) > accessFlushSize {
		a.flushLocked()
	}
	a.buf = append(a.buf, line...)
	a.mu.Unlock()
	*bp = line
	linePool.Put(bp)
}

func (a *AccessLog) format(b []byte, e *accessEntry) []byte {
	if a.json {
		b = append(b, `{"time":"`...)
		b = appendTime(b, e.start)
		b = append(b, `","level":"INFO","msg":"access","method":`...)
		b = appendJSONString(b, e.method)
		b = append(b, `,"path":`...)
		b = appendJSONString(b, e.path)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(e.status), 10)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, e.bytes, 10)
		b = append(b, `,"duration_ms":`...)
		b = appendMillis(b, e.duration)
		b = append(b, `,"user_id":`...)
		b = appendJSONString(b, e.userID)
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, e.requestID)
		b = append(b, `,"client_ip":"`...)
		if e.clientIP.IsValid() {
			b = e.clientIP.AppendTo(b)
		}
		return append(b, "\"}\n"...)
	}
	b = append(b, "time="...)
	b = appendTime(b, e.start)
	b = append(b, " level=INFO msg=access method="...)
	b = appendTextValue(b, e.method)
	b = append(b, " path="...)
	b = appendTextValue(b, e.path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(e.status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, e.bytes, 10)
	b = append(b, " duration_ms="...)
	b = appendMillis(b, e.duration)
	b = append(b, " user_id="...)
	b = appendTextValue(b, e.userID)
	b = append(b, " request_id="...)
	b = appendTextValue(b, e.requestID)
	b = append(b, " client_ip="...)
	if e.clientIP.IsValid() {
		b = e.clientIP.AppendTo(b)
	}
	return append(b, '\n')
}

// appendTextValue writes s as slog's text handler would: bare when it is
// plain, else Go-quoted, so CR, LF, spaces, quotes and '=' cannot forge a
// field or a line (LG3).
func appendTextValue(b []byte, s string) []byte {
	if s == "" {
		return append(b, `""`...)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '=' || c == '"' || c >= utf8.RuneSelf {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(b, s...)
}

// appendJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendTime writes t in UTC as 2006-01-02T15:04:05.000Z: the layout of
// slog's text handler, and RFC 3339 for JSON. Done by hand, it costs a
// tenth of time.AppendFormat.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = append4(b, year)
	b = append(b, '-')
	b = append2(b, int(month))
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, minute)
	b = append(b, ':')
	b = append2(b, sec)
	b = append(b, '.')
	b = append3(b, t.Nanosecond()/1e6)
	return append(b, 'Z')
}

// appendMillis writes d in milliseconds with three decimals (1.500).
func appendMillis(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	us := int64(d / time.Microsecond)
	b = strconv.AppendInt(b, us/1000, 10)
	b = append(b, '.')
	return append3(b, int(us%1000))
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10%10), byte('0'+n%10)) }

func append3(b []byte, n int) []byte {
	return append(b, byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

func append4(b []byte, n int) []byte {
	return append(b, byte('0'+n/1000%10), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}
