package mailtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
)

// Parsed is a message as a reader sees it.
type Parsed struct {
	Header  mail.Header
	Subject string // decoded
	Text    string // the text/plain part, decoded
	HTML    string // the text/html part, decoded
}

// Parse reads a message with net/mail and its multipart/alternative body
// with mime/multipart, decoding quoted-printable parts (line ends become
// "\n"). It fails on anything that is not one text and one HTML alternative.
func Parse(data []byte) (*Parsed, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	p := &Parsed{Header: msg.Header}
	if p.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if mediaType != "multipart/alternative" {
		return nil, fmt.Errorf("content type %s, want multipart/alternative", mediaType)
	}
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := parts.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var body io.Reader = part
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			body = quotedprintable.NewReader(part)
		}
		content, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		content = bytes.ReplaceAll(content, []byte("\r\n"), []byte("\n"))
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "text/plain":
			p.Text = string(content)
		case "text/html":
			p.HTML = string(content)
		default:
			return nil, fmt.Errorf("unexpected part %s", ct)
		}
	}
	if p.Text == "" || p.HTML == "" {
		return nil, errors.New("missing text or HTML part")
	}
	return p, nil
}
