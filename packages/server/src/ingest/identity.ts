/**
 * Whether a MAC may identify a host on its own. Virtual-router MACs (VRRP and CARP
 * 00:00:5e:00:01:xx / 00:00:5e:00:02:xx, HSRP 00:00:0c:07:ac:xx and 00:00:0c:9f:fx:xx) move between
 * routers, and locally administered (randomised) or multicast MACs are not a device's own.
 */
export function isIdentifyingMac(mac: string): boolean {
  const m = mac.toLowerCase();
  const first = parseInt(m.slice(0, 2), 16);
  if (Number.isNaN(first) || first & 0x01 || first & 0x02) return false;
  if (m.startsWith('00:00:5e:00:01:') || m.startsWith('00:00:5e:00:02:')) return false;
  if (m.startsWith('00:00:0c:07:ac:') || m.startsWith('00:00:0c:9f:f')) return false;
  return m !== '00:00:00:00:00:00';
}
