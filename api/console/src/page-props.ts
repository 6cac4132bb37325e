import type { Session } from './api';

/** What every page of the console is given by the app shell (App.tsx), which imports the pages. */
export interface PageProps {
  session: Session;
  setSession: (s: Session) => void;
  path: string[];
  navigate: (to: string) => void;
}
