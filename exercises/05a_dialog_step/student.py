"""Exercise 05a: write the `date` step of the booking dialog. Fill in the TODO, then run `labkit check 05a`."""

SCENARIO = """\
name: booking
initial: name
steps:
  name:
    instructions: Ask for the guest's name.
    results:
      name: {type: string}
    signals:
      next: {to: date, needs: [name]}
      stay: name
  date:
    instructions: TODO ask for the date
    # TODO: results (a string called date) and signals next / stay / back
    signals:
      stay: date
  done:
    final: true
    message: Booked.
"""
