package app

import corev1 "k8s.io/api/core/v1"

// UnitUsage is what a unit uses and may use. CPU is in millicores and Memory
// in bytes (the working set), from the metrics API: absent when the cluster
// does not serve it or the user may not read it. The limits are the sums of
// the unit's containers' limits, absent when one of them has none (the
// unit is unbounded).
type UnitUsage struct {
	CPU         *int64 `json:"cpu,omitempty"`
	Memory      *int64 `json:"memory,omitempty"`
	CPULimit    int64  `json:"cpuLimit,omitempty"`
	MemoryLimit int64  `json:"memoryLimit,omitempty"`
}

// SetUsage records what the unit uses now.
func (u *UnitUsage) SetUsage(cpuMilli, memBytes int64) {
	u.CPU, u.Memory = &cpuMilli, &memBytes
}

// podLimits sums the limits of p's containers: 0 for a resource one of
// them does not limit.
func podLimits(p *corev1.Pod) (cpuMilli, memBytes int64) {
	var cpuOK, memOK = len(p.Spec.Containers) > 0, len(p.Spec.Containers) > 0
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && cpuOK {
			cpuMilli += q.MilliValue()
		} else {
			cpuOK = false
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && memOK {
			memBytes += q.Value()
		} else {
			memOK = false
		}
	}
	if !cpuOK {
		cpuMilli = 0
	}
	if !memOK {
		memBytes = 0
	}
	return cpuMilli, memBytes
}
