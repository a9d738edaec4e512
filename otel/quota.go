package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen/cluster"
)

// attrTenant is the tenant of the quota instruments (Metrics.Quota): one
// of the cluster.QuotaOptions.TopTenants tenants with the most listens,
// by name, or "other" for all the rest, so that the series are bounded.
const attrTenant = attribute.Key("mcp.listen.tenant")

// otherTenant is the attrTenant value of the tenants not named.
const otherTenant = "other"

// Quota registers instruments that read q's Stats at each collection:
//
//	name                         kind                     unit       attributes
//	mcp.listen.quota.open        ObservableUpDownCounter  {stream}   tenant
//	mcp.listen.quota.deployment  ObservableUpDownCounter  {stream}   tenant
//	mcp.listen.quota.refused     ObservableCounter        {request}  tenant
//	mcp.listen.quota.fallback    ObservableUpDownCounter  {instance}
//	mcp.listen.quota.instances   ObservableUpDownCounter  {instance}
//
// open counts a tenant's listens open on this instance; deployment adds
// those the other instances last reported (what the quota is held
// against); refused the listens refused here at either level (tenant or
// principal). Each series has the attribute mcp.listen.tenant: the
// tenants named are those of cluster.QuotaStats.Tenants, the rest summed
// under "other" (see cluster.TenantStats for when a tenant's count of
// refusals starts over: a series that leaves the top and comes back is
// read as a counter reset). fallback is 1 while the
// quota holds keys to local shares (its broker lost), instances the
// instances it counts. Unregister the returned registration to stop. A
// nil (disabled) m registers nothing.
func (m *Metrics) Quota(q *cluster.Quota) (metric.Registration, error) {
	if m == nil || q == nil {
		return noop.Registration{}, nil
	}
	meter := m.provider.Meter(ScopeName)
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		g, err := meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	open := gauge("mcp.listen.quota.open", "{stream}", "A tenant's listens open on this instance.")
	deployment := gauge("mcp.listen.quota.deployment", "{stream}",
		"A tenant's listens open across the deployment, as this instance last heard.")
	fallback := gauge("mcp.listen.quota.fallback", "{instance}",
		"1 while the quota holds tenants to local shares (its broker lost).")
	instances := gauge("mcp.listen.quota.instances", "{instance}", "Instances the quota counts, itself included.")
	refused, err := meter.Int64ObservableCounter("mcp.listen.quota.refused", metric.WithUnit("{request}"),
		metric.WithDescription("Listens refused over a tenant's or a principal's quota, by tenant."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return noop.Registration{}, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := q.Stats()
		for _, t := range s.Tenants {
			name := t.Tenant
			if name == "" {
				name = otherTenant
			}
			opt := metric.WithAttributeSet(attribute.NewSet(attrTenant.String(name)))
			o.ObserveInt64(open, int64(t.Open), opt)
			o.ObserveInt64(deployment, int64(t.Deployment), opt)
			o.ObserveInt64(refused, int64(t.Refused), opt)
		}
		fb := int64(0)
		if s.Fallback {
			fb = 1
		}
		o.ObserveInt64(fallback, fb)
		o.ObserveInt64(instances, int64(s.Instances))
		return nil
	}, open, deployment, refused, fallback, instances)
}
