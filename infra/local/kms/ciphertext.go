package kms

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/google/uuid"
)

// A ciphertext blob, as Encrypt makes it and Decrypt reads it:
//
//	version (1 byte, 1) | key id (16 bytes) | nonce (12 bytes) | AES-256-GCM sealed plaintext and tag (16 bytes)
//
// The additional data of the seal binds the version, the key id and the
// encryption context (aad), so that Decrypt with another context, or a
// blob whose header was changed, fails as KMS fails: InvalidCiphertext.
// Like KMS's, the blob says which key made it, so that Decrypt may leave
// KeyId out. Its format is the stand-in's own: KMS's is not public.
const (
	ciphertextVersion = 1
	headerLength      = 1 + 16
	nonceLength       = 12
	tagLength         = 16
	minCiphertext     = headerLength + nonceLength + tagLength
)

var errCiphertext = errors.New("not a ciphertext of this stand-in")

// seal encrypts plaintext under k (a symmetric key) with the context.
func seal(k *Key, plaintext []byte, context map[string]string) ([]byte, error) {
	aead, err := gcm(k)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(k.KeyID)
	if err != nil {
		return nil, err
	}
	blob := make([]byte, headerLength+nonceLength, minCiphertext+len(plaintext))
	blob[0] = ciphertextVersion
	copy(blob[1:headerLength], id[:])
	if _, err := rand.Read(blob[headerLength:]); err != nil {
		return nil, err
	}
	return aead.Seal(blob, blob[headerLength:], plaintext, aad(blob[:headerLength], context)), nil
}

// keyIDOf is the id of the key a blob names, if it is one of ours.
func keyIDOf(blob []byte) (string, error) {
	if len(blob) < minCiphertext || blob[0] != ciphertextVersion {
		return "", errCiphertext
	}
	id, err := uuid.FromBytes(blob[1:headerLength])
	if err != nil {
		return "", errCiphertext
	}
	return id.String(), nil
}

// open decrypts a blob made by seal under k with the same context.
func open(k *Key, blob []byte, context map[string]string) ([]byte, error) {
	if len(blob) < minCiphertext {
		return nil, errCiphertext
	}
	aead, err := gcm(k)
	if err != nil {
		return nil, err
	}
	nonce := blob[headerLength : headerLength+nonceLength]
	return aead.Open(nil, nonce, blob[headerLength+nonceLength:], aad(blob[:headerLength], context))
}

func gcm(k *Key) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.Material)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// aad is the additional data: the header, then each pair of the context
// in the order of its keys, each string prefixed by its length, so that
// no two contexts give the same bytes. As in KMS, the order the caller
// wrote the pairs in does not matter, their case does, and no context is
// the same as an empty one.
func aad(header []byte, context map[string]string) []byte {
	out := append([]byte("local-kms-context:"), header...)
	for _, k := range slices.Sorted(maps.Keys(context)) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(context[k])))
		out = append(out, context[k]...)
	}
	return out
}
