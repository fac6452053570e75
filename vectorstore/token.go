package vectorstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"slices"
	"time"

	"github.com/stratamem/strata/vectorstore/driver"
)

// fingerprint identifies a (filter, order) pair so a page token is refused
// when replayed against another query, instead of silently paging through
// the wrong result set.
func fingerprint(f Filter, desc bool) [8]byte {
	// encoding/json sorts map keys, so the encoding is canonical once IDs
	// are sorted too.
	f.IDs = slices.Clone(f.IDs)
	slices.Sort(f.IDs)
	b, _ := json.Marshal(struct {
		F    Filter `json:"f"`
		Desc bool   `json:"d"`
	}{f, desc})
	sum := sha256.Sum256(b)
	var fp [8]byte
	copy(fp[:], sum[:8])
	return fp
}

const tokenVersion = 1

// Page tokens are base64url(version | fingerprint[8] | created unix micros
// int64 | id bytes | CRC-32 of the preceding bytes): opaque to users, stable
// across processes and drivers; the checksum turns a truncated or edited
// token into an error instead of a silently different cursor.
func encodeToken(c driver.Cursor, fp [8]byte) string {
	b := make([]byte, 0, 1+8+8+len(c.ID))
	b = append(b, tokenVersion)
	b = append(b, fp[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.CreatedAt.UnixMicro()))
	b = append(b, c.ID...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string, fp [8]byte) (driver.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 1+8+8+1+4 || b[0] != tokenVersion {
		return driver.Cursor{}, errors.New("malformed page token")
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return driver.Cursor{}, errors.New("malformed page token (checksum)")
	}
	b = body
	if [8]byte(b[1:9]) != fp {
		return driver.Cursor{}, errors.New("page token belongs to another filter or order")
	}
	us := int64(binary.BigEndian.Uint64(b[9:17]))
	return driver.Cursor{CreatedAt: time.UnixMicro(us).UTC(), ID: string(b[17:])}, nil
}
