package cluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// A ConfigMap's data and binary data, a Secret's data decoded; nil for
// one the namespace does not have.
func TestConfigMapAndSecret(t *testing.T) {
	dyn, disc := clustertest.Fake{Objects: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ml}
data: {mode: fast}
binaryData: {blob: aGk=}
---
apiVersion: v1
kind: Secret
metadata: {name: hf, namespace: ml}
data: {token: czNjcmV0}
`}.Clients(t)
	c := &cluster.Client{Dynamic: dyn, Discovery: disc}
	ctx := context.Background()
	cm, err := c.ConfigMap(ctx, "ml", "settings")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"mode": "fast", "blob": "hi"}, cm)
	secret, err := c.Secret(ctx, "ml", "hf")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"token": "s3cret"}, secret)
	none, err := c.Secret(ctx, "other", "hf")
	require.NoError(t, err)
	require.Nil(t, none)
}
