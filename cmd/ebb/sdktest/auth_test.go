package sdktest

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestWrongKeyRefused: a client signing with another key gets 401 and
// changes nothing; `--master-key` replaces the default key.
func TestWrongKeyRefused(t *testing.T) {
	t.Parallel()
	const otherKey = "dGhpcyBpcyBub3QgdGhlIGVtdWxhdG9yJ3Mga2V5IGF0IGFsbCwganVzdCBzb21lIGJ5dGVzIQ=="
	s := startServer(t, "--master-key", otherKey)
	ctx := context.Background()

	_, err := s.client(t).CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "x"}, nil)
	wantStatus(t, "create database signed with the emulator's key on a server with another", err, 401)

	cred, err := azcosmos.NewKeyCredential(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	right, err := azcosmos.NewClientWithKey(s.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := right.NewDatabase("x")
	_, err = db.Read(ctx, nil)
	wantStatus(t, "read database x after the refused create", err, 404)
	if _, err := right.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "x"}, nil); err != nil {
		t.Fatalf("create database with the server's key: %v", err)
	}
}
