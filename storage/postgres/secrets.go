package postgres

import (
	"context"
	"crypto/rand"
	"errors"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Secret returns the named server secret, made on first use: of replicas
// asking at once, the first INSERT wins and every one reads the stored
// value.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("storage/postgres: secret without a name")
	}
	fresh := make([]byte, storage.SecretSize)
	_, _ = rand.Read(fresh)
	if _, err := s.pool.Exec(ctx, "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", name, fresh); err != nil {
		return nil, wrap2("secret", err)
	}
	var value []byte
	if err := s.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&value); err != nil {
		return nil, wrap("secret", err)
	}
	return value, nil
}
