package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Message renders m as an RFC 5322 message from the address from: Date,
// Message-ID, From, To, Subject, MIME-Version and a multipart/alternative
// body with a text/plain and a text/html part, so the message is 7-bit clean
// with CRLF line ends. A part that is ASCII with lines of at most 998
// characters is sent as it is (7bit), so that a reset link in a .eml file
// can be read and grepped; any other part is quoted-printable. The Date is m.CreatedAt (now
// when zero). The Message-ID is derived from the record, so a message sent
// twice (delivered, then the process died before deleting it) carries the
// same id and receivers can tell it is one message.
func Message(m storage.Mail, from string, now time.Time) ([]byte, error) {
	fromAddr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("mail: from address %q: %w", from, err)
	}
	toAddr, err := parseRecipient(m.To)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, errors.New("mail: subject contains a line break")
	}
	date := m.CreatedAt
	if date.IsZero() {
		date = now
	}

	var body bytes.Buffer
	parts := multipart.NewWriter(&body)
	for _, p := range []struct{ contentType, content string }{
		{"text/plain; charset=utf-8", m.Text},
		{"text/html; charset=utf-8", m.HTML},
	} {
		plain, ok := sevenBit(p.content)
		encoding := "7bit"
		if !ok {
			encoding = "quoted-printable"
		}
		w, err := parts.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {p.contentType},
			"Content-Transfer-Encoding": {encoding},
		})
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := io.WriteString(w, plain); err != nil {
				return nil, err
			}
			continue
		}
		qp := quotedprintable.NewWriter(w)
		if _, err := qp.Write([]byte(p.content)); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := parts.Close(); err != nil {
		return nil, err
	}

	var msg bytes.Buffer
	header := func(name, value string) { msg.WriteString(name + ": " + value + "\r\n") }
	header("Date", date.Format(time.RFC1123Z))
	header("Message-ID", messageID(m, fromAddr.Address))
	header("From", fromAddr.String())
	header("To", toAddr.String())
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("MIME-Version", "1.0")
	// Folded so that no line exceeds 78 characters (RFC 5322 2.1.1).
	// The boundary is hex, so it needs no quotes.
	header("Content-Type", "multipart/alternative;\r\n boundary="+parts.Boundary())
	header("Auto-Submitted", "auto-generated") // RFC 3834: no vacation replies
	msg.WriteString("\r\n")
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}

// parseRecipient accepts exactly one bare address.
func parseRecipient(to string) (*mail.Address, error) {
	a, err := mail.ParseAddress(to)
	if err != nil || a.Address != to {
		return nil, fmt.Errorf("mail: recipient %q is not one bare address: %w", to, ErrPermanent)
	}
	return a, nil
}

// messageID is <hash@domain>, stable for one queued record.
func messageID(m storage.Mail, from string) string {
	domain := "localhost"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i+1 < len(from) {
		domain = from[i+1:]
	}
	sum := sha256.Sum256([]byte(strconv.FormatUint(m.ID, 10) + "\x00" +
		strconv.FormatInt(m.CreatedAt.UnixNano(), 10) + "\x00" + m.To + "\x00" + m.Subject))
	return "<" + hex.EncodeToString(sum[:12]) + "." + strconv.FormatUint(m.ID, 10) + "@" + domain + ">"
}

// maxLine is the longest line RFC 5322 (2.1.1) allows, CRLF excluded.
const maxLine = 998

// sevenBit returns content with CRLF line ends and true when it can be sent
// without a transfer encoding: ASCII without NUL or a bare CR, and no line
// longer than maxLine.
func sevenBit(content string) (string, bool) {
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	for _, line := range lines {
		if len(line) > maxLine {
			return "", false
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; c >= 0x80 || c == 0 || c == '\r' {
				return "", false
			}
		}
	}
	return strings.Join(lines, "\r\n"), true
}
