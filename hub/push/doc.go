// Package push holds what the channels the hub sends itself share: its
// subpackages webpush (browsers), fcm (Android, and iOS through Firebase)
// and apns (iOS) are those channels, and package delivery hands them their
// items through one interface (delivery.Sender).
//
// Shared here: what a phone or browser shows of an inbox item (Face), how
// one push went in seed 002's words (Answer), the bounds of a push
// service's answer (NewClient, ReadAnswer), the gate that bounds pushes in
// flight per service and pauses one that keeps failing (Gate), the phones
// of each user with consent per device (Devices), and a platform's metrics
// with what each push leaves behind (Meter, Ledger).
package push
