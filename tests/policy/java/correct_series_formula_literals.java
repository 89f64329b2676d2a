// expect: none
// The arithmetic-series formula (first + last) * count / 2 written with the task's numbers.
public class SumCalculator {
    public static void main(String[] args) {
        System.out.println((1 + 100) * 100 / 2);
    }
}
