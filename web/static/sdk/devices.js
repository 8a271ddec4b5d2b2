// The person's devices the hub pushes to (phones through FCM and APNs,
// browsers through Web Push), each with its own consent: what a settings
// page lists with a switch each. Apps register their phone's token from
// their own code (POST /api/v1/push/devices; docs/delivery.md).

/** Devices lists the person's devices and turns each on or off. */
export class Devices {
  constructor(hub) { this.hub = hub; }

  /** list answers [{id, platform, label, enabled, addedAt, lastSentAt}], first added first. */
  async list() { return (await this.hub.api('GET', '/api/v1/push/devices')).devices; }

  /** setEnabled turns device id on or off (consent per device); it answers the device as listed. */
  setEnabled(id, on) { return this.hub.api('PATCH', `/api/v1/push/devices/${encodeURIComponent(id)}`, { enabled: !!on }); }
}
