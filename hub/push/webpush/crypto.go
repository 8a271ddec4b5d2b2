package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// recordSize is the one record's size in the aes128gcm header: a push
// message is at most 4 KB, so one record always holds it.
const recordSize = 4096

// MaxPayload is the most plaintext one push carries: 4,096 bytes less the
// header (86), the tag (16) and the record delimiter (1).
const MaxPayload = recordSize - 86 - 16 - 1

// ErrPayloadTooLarge is a payload over MaxPayload.
var ErrPayloadTooLarge = errors.New("webpush: payload over 3,993 bytes")

// Encrypt seals plaintext for a subscription (its p256dh public key and
// auth secret) as RFC 8291 says, with a fresh key pair and salt.
func Encrypt(plaintext, p256dh, auth []byte) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return encrypt(plaintext, p256dh, auth, as, salt)
}

// encrypt is Encrypt with the sender's key pair (as) and the salt given:
// the header (salt, record size, the sender's public key) and one record.
func encrypt(plaintext, p256dh, auth []byte, as *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	if len(plaintext) > MaxPayload {
		return nil, ErrPayloadTooLarge
	}
	ua, err := ecdh.P256().NewPublicKey(p256dh)
	if err != nil {
		return nil, fmt.Errorf("webpush: the subscription's p256dh: %w", err)
	}
	if len(auth) != 16 {
		return nil, errors.New("webpush: the subscription's auth is not 16 bytes")
	}
	secret, err := as.ECDH(ua)
	if err != nil {
		return nil, err
	}
	asPub := as.PublicKey().Bytes()
	gcm, nonce, err := keysOf(secret, auth, p256dh, asPub, salt)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 21+len(asPub)+len(plaintext)+1+gcm.Overhead())
	out = append(out, salt...)
	out = binary.BigEndian.AppendUint32(out, recordSize)
	out = append(out, byte(len(asPub)))
	out = append(out, asPub...)
	record := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), 2) // 2: the last record
	return gcm.Seal(out, nonce, record, nil), nil
}

// Decrypt opens a message sealed for a subscription whose private key and
// auth secret are given: what a browser does. The hub never needs it; its
// tests and stand-in push services do.
func Decrypt(msg, auth []byte, ua *ecdh.PrivateKey) ([]byte, error) {
	if len(msg) < 21 || len(msg) < 21+int(msg[20]) {
		return nil, errors.New("webpush: a message shorter than its header")
	}
	salt, keyLen := msg[:16], int(msg[20])
	as, err := ecdh.P256().NewPublicKey(msg[21 : 21+keyLen])
	if err != nil {
		return nil, err
	}
	secret, err := ua.ECDH(as)
	if err != nil {
		return nil, err
	}
	gcm, nonce, err := keysOf(secret, auth, ua.PublicKey().Bytes(), as.Bytes(), salt)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, msg[21+keyLen:], nil)
	if err != nil {
		return nil, err
	}
	for len(plain) > 0 && plain[len(plain)-1] == 0 { // padding
		plain = plain[:len(plain)-1]
	}
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("webpush: no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}

// keysOf derives the record's cipher and nonce from the ECDH secret, the
// auth secret, both public keys (the user agent's, the sender's) and the
// salt.
func keysOf(secret, auth, uaPub, asPub, salt []byte) (cipher.AEAD, []byte, error) {
	// RFC 8291 §3.4: the input keying material from the ECDH secret, keyed
	// by the auth secret and bound to both public keys.
	info := append(append([]byte("WebPush: info\x00"), uaPub...), asPub...)
	ikm, err := hkdf.Key(sha256.New, secret, auth, string(info), 32)
	if err != nil {
		return nil, nil, err
	}
	// RFC 8188 §2.2 and §2.3: the content key and nonce from the salt.
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, nil, err
	}
	gcm, err := cipher.NewGCM(block)
	return gcm, nonce, err
}
