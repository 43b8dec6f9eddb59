package gateway

import (
	"net/http"
	"strings"
)

// account answers GET /: the account metadata, whose locations advertise
// the endpoint the SDKs send every later request to.
func (q *request) account() *apiError {
	ep, _ := q.s.endpoint.Load().(string)
	if ep == "" {
		scheme := "https"
		if q.r.TLS == nil {
			scheme = "http"
		}
		ep = scheme + "://" + q.r.Host + "/"
	}
	if !strings.HasSuffix(ep, "/") {
		ep += "/"
	}
	loc := []map[string]string{{"name": "South Central US", "databaseAccountEndpoint": ep}}
	q.noteRead()
	return q.replyJSON(http.StatusOK, map[string]any{
		"_self":                        "",
		"id":                           "localhost",
		"_rid":                         "localhost",
		"media":                        "//media/",
		"addresses":                    "//addresses/",
		"_dbs":                         "//dbs/",
		"writableLocations":            loc,
		"readableLocations":            loc,
		"enableMultipleWriteLocations": false,
		"userReplicationPolicy":        map[string]any{"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"userConsistencyPolicy":        map[string]any{"defaultConsistencyLevel": "Strong"},
		"systemReplicationPolicy":      map[string]any{"minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"readPolicy":                   map[string]any{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration":     `{"maxSqlQueryInputLength":524288,"maxJoinsPerSqlQuery":0,"maxLogicalAndPerSqlQuery":100000,"maxLogicalOrPerSqlQuery":100000,"maxUdfRefPerSqlQuery":0,"maxInExpressionItemsCount":100000,"queryMaxInMemorySortDocumentCount":500,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":false,"sqlAllowScalarSubQuery":false,"allowNewKeywordsAsIdentifiers":true,"enableSpatialIndexing":false,"maxSpatialQueryCells":0,"spatialMaxGeometryPointCount":0,"sqlDisableOptimizationFlags":0,"sqlEnableParameterizedQueryCache":false}`,
	})
}
