package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Kueue's API is read in the newest version the cluster serves: v1beta1 is
// deprecated since Kueue v0.15, and the API server warns of it on every read.
func TestKueueInTheNewestVersionServed(t *testing.T) {
	for served, want := range map[string]string{"kueue.x-k8s.io/v1beta2": "v1beta2", "kueue.x-k8s.io/v1beta1": "v1beta1", "": "v1beta1"} {
		disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
		if served != "" {
			disc.Resources = []*metav1.APIResourceList{{GroupVersion: served}}
		}
		client := &Client{Discovery: disc}
		require.Equal(t, want, client.Kueue(context.Background(), "localqueues").Version, "served: %q", served)
	}
}
