package webpush

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"testing"
	"time"
)

func unb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8291's Appendix A: the same keys and salt give the same bytes, and
// the user agent's private key opens them.
func TestEncrypt_RFC8291AppendixA(t *testing.T) {
	as, err := ecdh.P256().NewPrivateKey(unb64(t, "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(as.PublicKey().Bytes(), unb64(t, "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")) {
		t.Fatal("as_public is not the example's")
	}
	plain := unb64(t, "V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24")
	uaPub := unb64(t, "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
	auth := unb64(t, "BTBZMqHH6r4Tts7J_aSIgg")
	got, err := encrypt(plain, uaPub, auth, as, unb64(t, "DGv6ra1nlYgDCS1FRnbzlw"))
	if err != nil {
		t.Fatal(err)
	}
	want := unb64(t, "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
	if !bytes.Equal(got, want) {
		t.Fatalf("encrypt:\n got %x\nwant %x", got, want)
	}
	ua, err := ecdh.P256().NewPrivateKey(unb64(t, "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"))
	if err != nil {
		t.Fatal(err)
	}
	if back, err := Decrypt(want, auth, ua); err != nil || !bytes.Equal(back, plain) {
		t.Fatalf("decrypt: %q %v", back, err)
	}
}

// A fresh key and salt each time: two sealings differ, both open, and a
// payload over MaxPayload is refused.
func TestEncrypt_RoundTripAndLimit(t *testing.T) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := bytes.Repeat([]byte{7}, 16)
	msg := bytes.Repeat([]byte("x"), MaxPayload)
	a, err := Encrypt(msg, ua.PublicKey().Bytes(), auth)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Encrypt(msg, ua.PublicKey().Bytes(), auth)
	if len(a) != recordSize || bytes.Equal(a, b) {
		t.Fatalf("a full message is %d bytes (want %d), and two sealings equal: %v", len(a), recordSize, bytes.Equal(a, b))
	}
	for _, m := range [][]byte{a, b} {
		if back, err := Decrypt(m, auth, ua); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("decrypt: %v", err)
		}
	}
	if _, err := Encrypt(append(msg, 'x'), ua.PublicKey().Bytes(), auth); err != ErrPayloadTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := Encrypt(msg, ua.PublicKey().Bytes()[:64], auth); err == nil {
		t.Fatal("a short p256dh was taken")
	}
}

// What one push costs the hub's CPU before the network: sealing a 1 KB
// payload (a fresh key pair, ECDH, HKDF, AES-GCM) and signing its VAPID
// token (ES256). docs/performance.md quotes it.
func BenchmarkPush_SealAndSign(b *testing.B) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := bytes.Repeat([]byte{7}, 16)
	k, _ := NewKeys()
	payload := bytes.Repeat([]byte("x"), 1024)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encrypt(payload, ua.PublicKey().Bytes(), auth); err != nil {
			b.Fatal(err)
		}
		if _, err := k.Authorization("https://push.example.net/x", "mailto:a@b.c", now); err != nil {
			b.Fatal(err)
		}
	}
}

// Sealing alone: what a push costs once its origin's token is made (the
// Sender signs one per push service origin an hour).
func BenchmarkPush_Seal(b *testing.B) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := bytes.Repeat([]byte{7}, 16)
	payload := bytes.Repeat([]byte("x"), 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encrypt(payload, ua.PublicKey().Bytes(), auth); err != nil {
			b.Fatal(err)
		}
	}
}
