// The treatments page: the list, one treatment, or the form, by the path below /console/treatments.
import type { PageProps } from '../page-props';
import { Empty } from '../ui';
import { TreatmentDetail } from './treatment-detail';
import { TreatmentForm } from './treatment-form';
import { TreatmentList } from './treatment-list';

export function TreatmentsPage(props: PageProps) {
  const { session, path } = props;
  if (!session.projectId) return <Empty>Choose or create a project first.</Empty>;
  if (path[0] === 'new') return <TreatmentForm {...props} />;
  if (path[0]) return <TreatmentDetail key={path[0]} {...props} treatmentId={path[0]} editing={path[1] === 'edit'} />;
  return <TreatmentList {...props} />;
}
