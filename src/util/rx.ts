// The parts of RxJS the daemon uses, from their own modules: the package's root loads all of RxJS (about 220
// modules, some 2.5 MB of the daemon's memory) for the four used here.
export { Observable } from 'rxjs/internal/Observable';
export { Subject } from 'rxjs/internal/Subject';
export type { Subscription } from 'rxjs/internal/Subscription';
export { map } from 'rxjs/internal/operators/map';
export { share } from 'rxjs/internal/operators/share';
