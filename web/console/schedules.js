export function init() {}
export function setOverview() {}
