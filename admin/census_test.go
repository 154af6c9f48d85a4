package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/admin"
)

// A client that goes away while its request reads the census does not
// cut the read short: the next request is served the counts, not a census
// of a cancelled read.
func TestCensusOfAClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) {
			o.Nodes = func(ctx context.Context) ([]admin.Node, error) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return []admin.Node{{Name: "n", Live: true}}, nil
			}
		})
		defer f.stop()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://admin.test/jobs/api/overview", nil)
		f.h.ServeHTTP(httptest.NewRecorder(), r)

		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o) // another user, a moment later
		assert.Empty(t, o.NodesError)
		assert.Empty(t, o.Warning)
		assert.Len(t, o.Nodes, 1)
		n, _ := o.count("failing")
		assert.Equal(t, 1, n)
	})
}
