export const systemClock = { now: () => new Date() };
/** A clock that only moves when told to: exact, sleep-free tests. */
export class ManualClock {
    current;
    constructor(start) {
        this.current = new Date(start).getTime();
    }
    now() {
        return new Date(this.current);
    }
    set(to) {
        this.current = new Date(to).getTime();
    }
    advance(ms) {
        this.current += ms;
        return this.now();
    }
}
//# sourceMappingURL=clock.js.map