package secondfactor

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"github.com/boombuler/barcode/qr"
)

// QR code rendering: each module drawn as qrModulePixels square pixels
// with the quiet zone of four modules the QR standard asks for, as a
// two-colour PNG (a few hundred bytes) so that it scales sharply in the page.
const (
	qrModulePixels = 6
	qrQuietModules = 4
)

// qrDataURI returns text as a QR code in a data: URI for an <img src>.
func qrDataURI(text string) (string, error) {
	code, err := qr.Encode(text, qr.M, qr.Auto)
	if err != nil {
		return "", fmt.Errorf("secondfactor: QR code: %w", err)
	}
	modules := code.Bounds().Dx()
	side := (modules + 2*qrQuietModules) * qrModulePixels
	img := image.NewPaletted(image.Rect(0, 0, side, side), color.Palette{color.White, color.Black})
	for y := range modules {
		for x := range modules {
			if r, _, _, _ := code.At(x, y).RGBA(); r != 0 {
				continue // a light module: the background
			}
			for dy := range qrModulePixels {
				for dx := range qrModulePixels {
					img.SetColorIndex((x+qrQuietModules)*qrModulePixels+dx, (y+qrQuietModules)*qrModulePixels+dy, 1)
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		return "", fmt.Errorf("secondfactor: QR code: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
